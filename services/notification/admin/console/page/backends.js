/* global ConsoleKit */
// The console's backends section (services/notification/admin/console/sections/backends.ts): not built yet.
'use strict';
void ConsoleKit;
