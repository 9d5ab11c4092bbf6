import { type ReactNode, useCallback, useEffect, useState } from 'react';
import { Link, Redirect, Route, Switch, useLocation } from 'wouter';
import { ApiError, api, type Me, setCsrfToken } from './api.js';
import { ConfirmIdentity } from './components/confirm-identity.js';
import { AccountPage } from './pages/account.js';
import { AuditPage } from './pages/audit.js';
import { InvitationPage } from './pages/invitation.js';
import { JobPage, JobsPage } from './pages/jobs.js';
import { KeysPage } from './pages/keys.js';
import { MembersPage } from './pages/members.js';
import { PlanPage } from './pages/plan.js';
import { SignInPage } from './pages/sign-in.js';
import { UsagePage } from './pages/usage.js';
import { SessionContext } from './session.js';

const NAV = [
  ['/keys', 'API keys'],
  ['/plan', 'Plan'],
  ['/usage', 'Quota & usage'],
  ['/jobs', 'Jobs'],
  ['/members', 'Members'],
  ['/audit', 'Audit log'],
  ['/account', 'Account'],
] as const;

export function App() {
  const [me, setMe] = useState<Me | null | undefined>(undefined);
  const [location, navigate] = useLocation();

  const refresh = useCallback(async () => {
    try {
      const m = await api.get<Me>('/api/session');
      setCsrfToken(m.csrf_token);
      setMe(m);
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) setMe(null);
      else throw error;
    }
  }, []);

  useEffect(() => {
    void refresh();
  }, [refresh]);

  // A sign-out that did not reach the server (network, 5xx) leaves the session alive: the page says so
  // and stays signed in, so nobody walks away from a shared computer believing they signed out. A 401
  // means the session had ended already (elsewhere, or idle): nothing is left to end.
  const [signOutFailed, setSignOutFailed] = useState(false);
  const signOut = useCallback(async () => {
    try {
      await api.post('/api/session/sign-out');
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 401)) {
        setSignOutFailed(true);
        return;
      }
    }
    setSignOutFailed(false);
    setCsrfToken('');
    setMe(null);
    navigate('/sign-in');
  }, [navigate]);

  // Pages anyone can open.
  if (location === '/invitation')
    return (
      <Shell>
        <InvitationPage />
      </Shell>
    );
  if (me === undefined)
    return (
      <Shell>
        <p aria-live="polite">Loading…</p>
      </Shell>
    );
  if (me === null) {
    if (location !== '/sign-in') return <Redirect to="/sign-in" />;
    return (
      <Shell>
        <SignInPage onSignedIn={refresh} />
      </Shell>
    );
  }
  if (location === '/sign-in' || location === '/') return <Redirect to="/keys" />;

  return (
    <SignedIn me={me} refresh={refresh} signOut={signOut} signOutFailed={signOutFailed} location={location} />
  );
}

/** The pages of a signed-in person: header, navigation, the page of the location. */
function SignedIn(props: {
  me: Me;
  refresh: () => Promise<void>;
  signOut: () => Promise<void>;
  signOutFailed: boolean;
  location: string;
}) {
  const { me, refresh, signOut, signOutFailed, location } = props;
  return (
    <SessionContext.Provider value={{ me, refresh, signOut }}>
      <Shell
        header={
          <>
            <span className="org">{me.organization?.name ?? 'Your organization'}</span>
            <span className="who">
              {me.member.email} · {me.member.role}
            </span>
            <button type="button" onClick={() => void signOut()}>
              Sign out
            </button>
          </>
        }
        nav={
          <nav aria-label="Dashboard">
            <ul>
              {NAV.map(([href, label]) => (
                <li key={href}>
                  <Link href={href} aria-current={location.startsWith(href) ? 'page' : undefined}>
                    {label}
                  </Link>
                </li>
              ))}
            </ul>
          </nav>
        }
      >
        {signOutFailed && (
          <p className="error" role="alert">
            Sign-out failed: you are still signed in. Try again.
          </p>
        )}
        {me.organization?.suspended && (
          <p className="banner" role="status">
            This organization is suspended: requests to the API are refused. Contact support.
          </p>
        )}
        <ConfirmIdentity />
        <Switch>
          <Route path="/keys" component={KeysPage} />
          <Route path="/plan" component={PlanPage} />
          <Route path="/usage" component={UsagePage} />
          <Route path="/jobs" component={JobsPage} />
          <Route path="/jobs/:id">{(params) => <JobPage id={params.id} />}</Route>
          <Route path="/members" component={MembersPage} />
          <Route path="/audit" component={AuditPage} />
          <Route path="/account" component={AccountPage} />
          <Route>
            <h1>Page not found</h1>
            <p>
              <Link href="/keys">Go to your API keys</Link>
            </p>
          </Route>
        </Switch>
      </Shell>
    </SessionContext.Provider>
  );
}

function Shell(props: { header?: ReactNode; nav?: ReactNode; children: ReactNode }) {
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">dnc-scrub</span>
        {props.header}
      </header>
      {props.nav}
      <main id="main">{props.children}</main>
    </>
  );
}
