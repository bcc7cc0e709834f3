import { defineConfig } from "vitest/config";

/** The real-browser tests (`npm run test:browser`): headless Chromium from the system's packages. */
export default defineConfig({
  test: {
    include: ["test/browser/**/*.browser.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
