/* global ConsoleKit */
// The console's users section (services/notification/admin/console/sections/users.ts): not built yet.
'use strict';
void ConsoleKit;
