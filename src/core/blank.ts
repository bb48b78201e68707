/**
 * Whether an operator's `by` or `reason` says nothing: not a string, or only white space, controls and invisible
 * format characters (U+200B, U+2060, U+FEFF), which trim() keeps: a zero-width space passed as who released a
 * payment, and why.
 */
export const blank = (s: unknown): boolean => typeof s !== "string" || !s.replace(/[\s\p{Cc}\p{Cf}]/gu, "")
