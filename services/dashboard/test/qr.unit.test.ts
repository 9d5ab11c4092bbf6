import jsQRModule from 'jsqr';
import { describe, expect, it } from 'vitest';
import { qrPath } from '../src/domain/qr.js';
import { newTotpSecret, totpUri } from '../src/domain/totp.js';

// jsqr is CommonJS: its default export is a property of what Node imports.
const jsQR = jsQRModule.default;

// The QR code of the TOTP set-up: the SVG path the page draws, rasterized here and read back by an
// independent decoder (jsQR), must give the otpauth URI exactly.
function rasterize({ size, path }: { size: number; path: string }, scale = 4) {
  const side = size * scale;
  const rgba = new Uint8ClampedArray(side * side * 4).fill(255);
  for (const [, x, y, run] of path.matchAll(/M(\d+) (\d+)h(\d+)v1h-\3z/g)) {
    for (let dx = 0; dx < Number(run) * scale; dx++)
      for (let dy = 0; dy < scale; dy++) {
        const i = ((Number(y) * scale + dy) * side + Number(x) * scale + dx) * 4;
        rgba[i] = rgba[i + 1] = rgba[i + 2] = 0;
      }
  }
  return { rgba, side };
}

describe('qrPath', () => {
  it('draws a QR code that decodes to the otpauth URI', () => {
    for (const email of ['a@b.co', `a-rather-long.name+dashboard-${'x'.repeat(60)}@example.com`]) {
      const uri = totpUri(newTotpSecret(), email);
      const qr = qrPath(uri);
      const { rgba, side } = rasterize(qr);
      expect(jsQR(rgba, side, side)?.data).toBe(uri);
    }
  });

  it('is nothing but move, line and close commands inside a 4-module quiet zone', () => {
    const qr = qrPath(totpUri(newTotpSecret(), 'ana@example.com'));
    expect(qr.path).toMatch(/^(M\d+ \d+h\d+v1h-\d+z)+$/);
    const xs = [...qr.path.matchAll(/M(\d+) (\d+)h(\d+)/g)].flatMap(([, x, y, run]) => [
      Number(x),
      Number(y),
      Number(x) + Number(run),
    ]);
    expect(Math.min(...xs)).toBe(4);
    expect(Math.max(...xs)).toBe(qr.size - 4);
  });

  it('a wrong drawing does not decode (the check above can fail)', () => {
    const uri = totpUri(newTotpSecret(), 'ana@example.com');
    const qr = qrPath(uri);
    const damaged = { ...qr, path: qr.path.replace(/M(\d+) (\d+)/g, (_m, x, y) => `M${y} ${x}`) };
    expect(jsQR(rasterize(damaged).rgba, rasterize(damaged).side, rasterize(damaged).side)?.data).not.toBe(
      uri,
    );
  });
});
