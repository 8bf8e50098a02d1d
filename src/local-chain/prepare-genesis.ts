import { loadCatalog } from "../token/catalog.ts";
import { prepareGenesis } from "./start-local-chain.ts";

/**
 * Builds the embedded local chain's genesis into node_modules/.cache, once per install, so that
 * `npm start` loads it instead of building it (about 3 s). Run by `npm ci` (postinstall). It never
 * fails an install: without the cache, the first start builds the genesis itself.
 */
try {
  await prepareGenesis({
    catalog: loadCatalog(),
    slotMs: 400,
    log: (_level, message, fields) =>
      process.stdout.write(`${message}${fields ? ` ${JSON.stringify(fields)}` : ""}\n`),
  });
} catch (error) {
  process.stdout.write(
    `the local chain genesis was not built now (${String(error)}); the first start builds it\n`,
  );
}
