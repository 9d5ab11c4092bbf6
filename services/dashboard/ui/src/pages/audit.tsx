import { api, when } from '../api.js';
import { ErrorText, Page, TableWrap, useLoad } from '../components/ui.js';

interface Audit {
  events: { id: string; at: string; actor: string; action: string; target: string }[];
}

export function AuditPage() {
  const { data, error } = useLoad(() => api.get<Audit>('/api/audit'));
  return (
    <Page title="Audit log">
      <p>Who did what in this organization's dashboard, newest first (the latest 200 events).</p>
      <ErrorText error={error} />
      {data && (
        <TableWrap label="Audit log">
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Who</th>
              <th scope="col">What</th>
              <th scope="col">Detail</th>
            </tr>
          </thead>
          <tbody>
            {data.events.map((e) => (
              <tr key={e.id}>
                <td>{when(e.at)}</td>
                <td>{e.actor}</td>
                <td>{e.action.replaceAll('_', ' ')}</td>
                <td>{e.target}</td>
              </tr>
            ))}
          </tbody>
        </TableWrap>
      )}
    </Page>
  );
}
