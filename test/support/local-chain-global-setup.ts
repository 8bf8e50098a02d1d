/**
 * Vitest global setup: makes sure the local chain's genesis is in the cache before test files
 * start servers in parallel (`npm ci` builds it already; this covers a tree installed without
 * scripts), so no two workers build it at once.
 */
import { prepareGenesis } from "../../src/local-chain/index.ts";
import { loadCatalog } from "../../src/token/catalog.ts";

export default async function setup(): Promise<void> {
  await prepareGenesis({ catalog: loadCatalog(), slotMs: 400 });
}
