import { api, COUNTRY_NAMES, count, when } from '../api.js';
import { ErrorText, Page, Status, TableWrap, useLoad } from '../components/ui.js';

interface Plan {
  purchases: {
    id: string;
    country: string;
    state: string;
    monthly_quota: number;
    created_at: string;
    paid_at: string | null;
    activated_at: string | null;
    lapsed_at: string | null;
  }[];
  countries: {
    country: string;
    coverage: 'live' | 'planned';
    planned_for: string | null;
    maintenance_until: string | null;
  }[];
}

const STATE_HELP: Record<string, string> = {
  pending_payment: 'waiting for the initial payment',
  activation_pending: 'paid; the country is being activated for you',
  active: 'requests are admitted',
  lapsed: 'ended; requests are refused',
};

export function PlanPage() {
  const { data, error } = useLoad(() => api.get<Plan>('/api/plan'));
  const windows = data?.countries.filter((c) => c.maintenance_until) ?? [];
  return (
    <Page title="Plan and countries">
      <ErrorText error={error} />
      {windows.length > 0 && (
        <section className="banner" aria-labelledby="maintenance">
          <h2 id="maintenance">Announced maintenance</h2>
          <ul>
            {windows.map((c) => (
              <li key={c.country}>
                {COUNTRY_NAMES[c.country]} ({c.country}): requests answer 503{' '}
                <code>country_service_maintenance</code> until {when(c.maintenance_until)}.
              </li>
            ))}
          </ul>
        </section>
      )}
      <h2>Your purchases</h2>
      {data && (
        <TableWrap label="Purchases">
          <thead>
            <tr>
              <th scope="col">Country</th>
              <th scope="col">State</th>
              <th scope="col">Monthly quota</th>
              <th scope="col">Ordered</th>
              <th scope="col">Paid</th>
              <th scope="col">Activated</th>
            </tr>
          </thead>
          <tbody>
            {data.purchases.length === 0 && (
              <tr>
                <td colSpan={6}>No purchases yet.</td>
              </tr>
            )}
            {data.purchases.map((p) => (
              <tr key={p.id}>
                <td>
                  {COUNTRY_NAMES[p.country] ?? p.country} ({p.country})
                </td>
                <td>
                  <Status value={p.state} /> <span className="hint">{STATE_HELP[p.state]}</span>
                </td>
                <td>{count(p.monthly_quota)} checks</td>
                <td>{when(p.created_at)}</td>
                <td>{when(p.paid_at)}</td>
                <td>{when(p.activated_at)}</td>
              </tr>
            ))}
          </tbody>
        </TableWrap>
      )}
      <h2>Countries</h2>
      {data && (
        <ul className="countries">
          {data.countries.map((c) => (
            <li key={c.country} className={`country ${c.coverage}`}>
              <strong>{COUNTRY_NAMES[c.country] ?? c.country}</strong> <code>{c.country}</code>{' '}
              {c.coverage === 'live' ? (
                <Status value="live" />
              ) : (
                <>
                  <Status value="planned" />{' '}
                  <span className="hint">planned for {c.planned_for}; not live coverage yet</span>
                </>
              )}
            </li>
          ))}
        </ul>
      )}
    </Page>
  );
}
