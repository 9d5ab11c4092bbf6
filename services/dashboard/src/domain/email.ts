/** Email addresses are compared lowercased; bounded (RFC 5321: 254) and of a plain shape. */
export const MAX_EMAIL = 254;
const EMAIL = /^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+\.[^\s@<>()[\]\\,;:"]+$/;

export function normalEmail(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const email = value.trim().toLowerCase();
  if (email.length > MAX_EMAIL || !EMAIL.test(email)) return undefined;
  return email;
}
