export { dashboardConfig } from './config.js';
export { hashPassword, verifyPassword } from './domain/password.js';
export { totpCode } from './domain/totp.js';
export { main } from './main.js';
export { startDashboard } from './server.js';
