import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // netns tests create uniquely named namespaces, so files may run in parallel;
    // two workers match the 2-core CI machine.
    maxWorkers: 2,
  },
});
