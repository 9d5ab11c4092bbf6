import QRCode from 'qrcode';

/**
 * A QR code as the data of one SVG path, built here so the page draws it with an `<svg>` of its own:
 * no image service, no CDN, no inline style or script (the CSP stays without 'unsafe-inline'), and the
 * otpauth URI it encodes never leaves the response that already carries it (`no-store`, never logged).
 * One unit per module, dark modules only, inside a 4-module quiet zone; `size` is the side in units.
 */
export interface QrPath {
  size: number;
  path: string;
}

const QUIET = 4;

export function qrPath(text: string): QrPath {
  // Medium error correction: an otpauth URI of a 160-bit seed fits in a version 6-7 code that phones read
  // from a screen easily.
  const { size, data } = QRCode.create(text, { errorCorrectionLevel: 'M' }).modules;
  const parts: string[] = [];
  for (let y = 0; y < size; y++) {
    let x = 0;
    while (x < size) {
      if (!data[y * size + x]) {
        x += 1;
        continue;
      }
      let run = 1;
      while (x + run < size && data[y * size + x + run]) run += 1;
      parts.push(`M${x + QUIET} ${y + QUIET}h${run}v1h-${run}z`);
      x += run;
    }
  }
  return { size: size + 2 * QUIET, path: parts.join('') };
}
