/* global ConsoleKit */
// The console's suppressions section (services/notification/admin/console/sections/suppressions.ts): not built yet.
'use strict';
void ConsoleKit;
