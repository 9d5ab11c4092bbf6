import { configureTextEncoding } from '@bufbuild/protobuf/wire';

/**
 * protobuf-es turns every string field into a JavaScript string through TextDecoder, one native call
 * per field: for a Check of 10,000 phones that is 10,000 calls and ~1.8 ms of the adapter's decode.
 * Most strings on the internal plane are short ASCII (phones, ids, country codes), which a JavaScript
 * loop turns into a string without leaving JavaScript. Anything else (a byte over 0x7f, longer
 * strings, strict decoding) goes to TextDecoder as before, so the result is the same string.
 *
 * Both TextDecoders keep a leading U+FEFF (`ignoreBOM`): a string field's bytes are the string, and
 * protobuf-es's own default would drop the mark from a value that begins with one ("\uFEFF5512345678"
 * would reach the adapter as "5512345678", another input than the customer sent).
 */
const SHORT = 64;

export function useFastShortAsciiDecoding(): void {
  const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  const strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  const encoder = new TextEncoder();
  configureTextEncoding({
    encodeUtf8: (text) => encoder.encode(text),
    decodeUtf8(bytes, fatal) {
      if (fatal) return strict.decode(bytes);
      const n = bytes.length;
      if (n > SHORT) return decoder.decode(bytes);
      let text = '';
      for (let i = 0; i < n; i++) {
        const byte = bytes[i]!;
        if (byte > 0x7f) return decoder.decode(bytes);
        text += String.fromCharCode(byte);
      }
      return text;
    },
    checkUtf8(text) {
      try {
        encodeURIComponent(text);
        return true;
      } catch {
        return false;
      }
    },
  });
}

// Every process of the platform imports the kit; its protobuf decoding takes this path from the start.
useFastShortAsciiDecoding();
