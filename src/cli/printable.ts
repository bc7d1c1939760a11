/**
 * Text from elsewhere (a relay's messages, with record ids a token holder picks) made safe to
 * print on one line: control characters (a newline forging a log line, a terminal escape),
 * line and paragraph separators, and the bidirectional overrides and isolates (which could make
 * a line read as another) are shown as \u escapes. Everything else, non-ASCII text included,
 * prints as it is.
 */
export function printable(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)
}
