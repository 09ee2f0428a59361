export * from './codec';
export * from './error';
export * from './map';
export * from './object';
export * from './pin';
export * from './program';
export * from './tc';
