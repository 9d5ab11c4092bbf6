import { useState } from 'react';
import { api, COUNTRY_NAMES, count } from '../api.js';
import { ErrorText, Page, TableWrap, useLoad } from '../components/ui.js';

interface Usage {
  period: string;
  accounts: { country: string; limit: number; used: number; reserved: number }[];
  from_day: string;
  days: { day: string; country: string; v1: number; v2: number }[];
}

const pct = (part: number, whole: number) => (whole > 0 ? Math.min(100, (part / whole) * 100) : 0);

/** This month's quota per country as a bar (used, then reserved), with the numbers beside it. */
function QuotaBar({ a }: { a: Usage['accounts'][number] }) {
  const used = pct(a.used, a.limit);
  const reserved = Math.min(100 - used, pct(a.reserved, a.limit));
  const left = Math.max(0, a.limit - a.used - a.reserved);
  const label = `${COUNTRY_NAMES[a.country] ?? a.country}: ${count(a.used)} used and ${count(a.reserved)} reserved of ${count(a.limit)}`;
  return (
    <li className="quota">
      <div className="quota-head">
        <strong>
          {COUNTRY_NAMES[a.country] ?? a.country} <code>{a.country}</code>
        </strong>
        <span>
          {count(a.used)} used · {count(a.reserved)} reserved · {count(left)} left of {count(a.limit)}
        </span>
      </div>
      <svg className="bar" viewBox="0 0 100 6" preserveAspectRatio="none" role="img" aria-label={label}>
        <rect x="0" y="0" width="100" height="6" className="bar-bg" />
        <rect x="0" y="0" width={used} height="6" className="bar-used" />
        <rect x={used} y="0" width={reserved} height="6" className="bar-reserved" />
      </svg>
    </li>
  );
}

/** Every day of the range, with v1 and v2 summed over the chosen countries. */
function series(u: Usage, country: string) {
  const totals = new Map<string, { v1: number; v2: number }>();
  for (const d of u.days) {
    if (country !== 'all' && d.country !== country) continue;
    const t = totals.get(d.day) ?? { v1: 0, v2: 0 };
    t.v1 += d.v1;
    t.v2 += d.v2;
    totals.set(d.day, t);
  }
  const out: { day: string; v1: number; v2: number }[] = [];
  const start = new Date(`${u.from_day}T00:00:00Z`);
  for (let i = 0; i < 90; i++) {
    const day = new Date(start.getTime() + i * 86_400_000).toISOString().slice(0, 10);
    out.push({ day, ...(totals.get(day) ?? { v1: 0, v2: 0 }) });
  }
  return out;
}

function DailyChart({ u, country }: { u: Usage; country: string }) {
  const days = series(u, country);
  const highest = Math.max(0, ...days.map((d) => d.v1 + d.v2));
  const h = (n: number) => (n / Math.max(1, highest)) * 180;
  const total = days.reduce((s, d) => ({ v1: s.v1 + d.v1, v2: s.v2 + d.v2 }), { v1: 0, v2: 0 });
  return (
    <figure>
      <svg
        className="chart"
        viewBox="0 0 900 200"
        role="img"
        aria-label={`Daily checked numbers from ${days[0]!.day} to ${days.at(-1)!.day}: ${count(total.v1)} by v1 and ${count(total.v2)} by v2 jobs; the highest day ${count(highest)}.`}
      >
        <line x1="0" y1="190" x2="900" y2="190" className="axis" />
        {days.map((d, i) => (
          <g key={d.day}>
            <rect x={i * 10 + 1} y={190 - h(d.v1)} width="8" height={h(d.v1)} className="v1" />
            <rect x={i * 10 + 1} y={190 - h(d.v1) - h(d.v2)} width="8" height={h(d.v2)} className="v2" />
          </g>
        ))}
      </svg>
      <figcaption>
        <span className="legend v1">v1 (synchronous) {count(total.v1)}</span>
        <span className="legend v2">v2 (jobs) {count(total.v2)}</span>
        <span>
          {days[0]!.day} – {days.at(-1)!.day}, highest day {count(highest)}
        </span>
      </figcaption>
    </figure>
  );
}

export function UsagePage() {
  const { data, error } = useLoad(() => api.get<Usage>('/api/usage'));
  const [country, setCountry] = useState('all');
  const rows = data ? series(data, country).filter((d) => d.v1 + d.v2 > 0) : [];
  return (
    <Page title="Quota and usage">
      <ErrorText error={error} />
      {data && (
        <>
          <h2>This month ({data.period}, UTC)</h2>
          {data.accounts.length === 0 ? (
            <p>No quota yet: it comes with a country purchase.</p>
          ) : (
            <ul className="quotas">
              {data.accounts.map((a) => (
                <QuotaBar key={a.country} a={a} />
              ))}
            </ul>
          )}
          <p className="hint">
            Reserved numbers belong to requests and jobs in progress; they become used when they succeed and
            are released when they fail or are cancelled.
          </p>
          <h2>Daily usage, last 90 days</h2>
          <label htmlFor="usage-country">Country</label>
          <select id="usage-country" value={country} onChange={(e) => setCountry(e.target.value)}>
            <option value="all">All countries</option>
            {data.accounts.map((a) => (
              <option key={a.country} value={a.country}>
                {COUNTRY_NAMES[a.country] ?? a.country}
              </option>
            ))}
          </select>
          <DailyChart u={data} country={country} />
          <details>
            <summary>Days with usage as a table</summary>
            <TableWrap label="Daily usage">
              <thead>
                <tr>
                  <th scope="col">Day (UTC)</th>
                  <th scope="col">v1</th>
                  <th scope="col">v2</th>
                </tr>
              </thead>
              <tbody>
                {rows.length === 0 && (
                  <tr>
                    <td colSpan={3}>No usage in these 90 days.</td>
                  </tr>
                )}
                {rows.map((d) => (
                  <tr key={d.day}>
                    <td>{d.day}</td>
                    <td>{count(d.v1)}</td>
                    <td>{count(d.v2)}</td>
                  </tr>
                ))}
              </tbody>
            </TableWrap>
          </details>
        </>
      )}
    </Page>
  );
}
