import { mkdirSync } from 'node:fs';
import path from 'node:path';
import axe from 'axe-core';
import { type Browser, chromium, type Page } from 'playwright-core';

/**
 * Real headless Chromium (Debian's `chromium`, driven by playwright-core: `npx playwright install` cannot
 * download a browser here). The networking flags keep it from calling home on a closed network.
 */
export const CHROMIUM = process.env['DNC_CHROMIUM'] ?? '/usr/bin/chromium';

export async function launchChromium(): Promise<{ browser: Browser; close: () => Promise<void> }> {
  // playwright-core gives every launch a fresh temporary profile (--user-data-dir) and removes it.
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    browser,
    close: () => browser.close(),
  };
}

/** axe-core's serious and critical violations on the page as it is now (WCAG 2.x A and AA rules). */
export async function accessibilityViolations(page: Page): Promise<string[]> {
  // page.evaluate runs outside the page's Content-Security-Policy, which forbids inline scripts.
  await page.evaluate(axe.source);
  const result = (await page.evaluate(
    `axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } })`,
  )) as { passes: unknown[]; violations: { id: string; impact: string; nodes: { target: string[] }[] }[] };
  if (result.passes.length === 0) throw new Error('axe-core checked nothing: is the page empty?');
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

/** Whether the page fits a viewport of `width` CSS pixels without scrolling sideways. */
export async function fitsWidth(page: Page, width: number): Promise<{ fits: boolean; scrollWidth: number }> {
  const before = page.viewportSize();
  await page.setViewportSize({ width, height: 800 });
  const scrollWidth = (await page.evaluate('document.documentElement.scrollWidth')) as number;
  if (before) await page.setViewportSize(before);
  return { fits: scrollWidth <= width, scrollWidth };
}

export function artifactsDir(root: string, name: string): string {
  const dir = path.join(root, 'test-artifacts', name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** The pixels of an element's SVG as the browser draws them (onto a canvas), for a QR decoder. */
export async function drawnPixels(page: Page, selector: string): Promise<{ side: number; data: number[] }> {
  return page.evaluate(`(async () => {
    const svg = document.querySelector(${JSON.stringify(selector)});
    const side = 400;
    const img = new Image(side, side);
    img.src = 'data:image/svg+xml;base64,' + btoa(new XMLSerializer().serializeToString(svg));
    await img.decode();
    const canvas = document.createElement('canvas');
    canvas.width = canvas.height = side;
    const ctx = canvas.getContext('2d');
    ctx.drawImage(img, 0, 0, side, side);
    return { side, data: Array.from(ctx.getImageData(0, 0, side, side).data) };
  })()`);
}
