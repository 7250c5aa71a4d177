/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.(t|j)sx?$': [
      '@swc/jest',
      {
        jsc: { parser: { syntax: 'typescript', decorators: true }, target: 'es2022' },
        module: { type: 'commonjs' },
        sourceMaps: 'inline',
      },
    ],
  },
  // jose v6 ships ESM only and jest (below Node 24.9) cannot require() ESM: let swc compile it to CommonJS.
  // Compiled code needs nothing: Node >= 20.19 require()s ESM natively.
  // @opentelemetry/otlp-exporter-base loads node:http(s) with a dynamic import(), which jest's VM only
  // runs under --experimental-vm-modules (set by `npm run test:only`, not by a bare `npx jest`): without
  // it every OTLP export fails. swc turns that import() into require(), so the flag does not matter.
  // The pattern also reaches copies nested under another package's node_modules.
  transformIgnorePatterns: ['/node_modules/(?!(.*/node_modules/)?(jose|@opentelemetry/otlp-exporter-base)/)'],
  // Real servers, real PostgreSQL: generous per-test limit so a slow shared machine does not flake.
  testTimeout: 120000,
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  // Tests that start processes and databases share the machine's two cores.
  maxWorkers: 2,
  reporters: [
    'default',
    '<rootDir>/test/support/count-reporter.js',
    '<rootDir>/test/support/reliability-reporter.js',
  ],
};
