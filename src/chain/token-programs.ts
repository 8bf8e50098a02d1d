import { type Address, address } from "@solana/addresses";

/**
 * The token programs' addresses, written here rather than imported from @solana-program/token and
 * token-2022, whose codecs a process loads only when it reads a mint (see kit-chain.ts).
 */
export const TOKEN_PROGRAM_ADDRESS: Address<"TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"> = address(
  "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
);
/** The Token-2022 program, whose mints carry extensions (metadata among them). */
export const TOKEN_2022_PROGRAM_ADDRESS: Address<"TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"> = address(
  "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb",
);
