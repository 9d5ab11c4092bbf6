import { createContext, useContext } from 'react';
import type { Me } from './api.js';

export interface SessionState {
  me: Me;
  refresh: () => Promise<void>;
  signOut: () => Promise<void>;
}

export const SessionContext = createContext<SessionState | undefined>(undefined);

export function useSession(): SessionState {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside a signed-in page');
  return s;
}

export function useIsOwner(): boolean {
  return useSession().me.member.role === 'owner';
}
