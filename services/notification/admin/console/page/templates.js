/* global ConsoleKit */
// The console's templates section (services/notification/admin/console/sections/templates.ts): not built yet.
'use strict';
void ConsoleKit;
