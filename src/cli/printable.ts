/** Control characters, line and paragraph separators, and bidirectional overrides and isolates. */
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g
/** The same, but for the tab. */
const UNPRINTABLE_BUT_TAB = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g

function escape(char: string): string {
  return `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`
}

/**
 * Text from elsewhere (a relay's messages, with record ids a token holder picks) made safe to
 * print on one line: control characters (a newline forging a log line, a terminal escape),
 * line and paragraph separators, and the bidirectional overrides and isolates (which could make
 * a line read as another) are shown as \u escapes. Everything else, non-ASCII text included,
 * prints as it is.
 */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, escape)
}

/**
 * One line of a multi-line text printed as a block (a record's field, split at its newlines):
 * as printable, but a tab stays a tab, which only moves the cursor on.
 */
export function printableLine(text: string): string {
  return text.replace(UNPRINTABLE_BUT_TAB, escape)
}
