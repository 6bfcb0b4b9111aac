import { config } from 'zod/mini';
import en from 'zod/v4/locales/en.js';

/**
 * The one place the agent takes zod from: its small form, `zod/mini` (the same checks and the same
 * issues as the full `zod`, as functions instead of methods). Import it as `import * as z from
 * './zod.js'`: a bundler then keeps only the functions used, where a namespace object passed on as
 * a value would keep all of zod (every locale included).
 *
 * zod/mini loads no messages of its own (every issue would read "Invalid input"), so the English
 * ones, the same the full package uses, are set here once, before any schema is parsed.
 */
config(en());

export * from 'zod/mini';
