/* global ConsoleKit */
// The console's activity section (services/notification/admin/console/sections/activity.ts): not built yet.
'use strict';
void ConsoleKit;
