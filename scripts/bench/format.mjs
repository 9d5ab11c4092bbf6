// Number formats of the report.
import { round } from './stats.mjs';

export const ms = (x) => (Number.isFinite(x) ? `${round(x, x < 10 ? 2 : 1)} ms` : '-');
export const s = (x) => (Number.isFinite(x) ? `${round(x / 1000, 2)} s` : '-');
export const ratio = (service, floor) =>
  Number.isFinite(service) && Number.isFinite(floor) && floor > 0 ? round(service / floor, 1) : null;
export const fmtRatio = (r) => (r === null || r === undefined ? '-' : `${r}x`);
export const int = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en') : '-');
export const mib = (x) => (Number.isFinite(x) ? `${Math.round(x)}` : '-');
