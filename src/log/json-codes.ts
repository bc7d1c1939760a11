/** The character codes of JSON's structure, shared by the scanners that read canonical JSON as text or as UTF-8 bytes (same values in both). */
export const QUOTE = 0x22
export const BACKSLASH = 0x5c
export const COMMA = 0x2c
export const COLON = 0x3a
export const OPEN_BRACE = 0x7b
export const CLOSE_BRACE = 0x7d
export const OPEN_BRACKET = 0x5b
export const CLOSE_BRACKET = 0x5d
