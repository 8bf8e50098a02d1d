import { type Address, address } from "@solana/kit";

/**
 * The Token-2022 program, whose mints carry extensions (metadata among them). Its address is
 * written here rather than imported from @solana-program/token-2022, whose codecs are half a
 * megabyte of code that a process loads only when it reads a Token-2022 mint.
 */
export const TOKEN_2022_PROGRAM_ADDRESS: Address<"TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"> = address(
  "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb",
);
