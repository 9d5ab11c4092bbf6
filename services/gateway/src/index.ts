export { buildApp } from './app.js';
export { type GatewayConfig, gatewayConfig } from './config.js';
export { type RunningGateway, startGateway } from './server.js';
