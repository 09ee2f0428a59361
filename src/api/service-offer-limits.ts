/** The bounds of a ServiceOffer (service-offer-schema.ts), apart from the schema so a process checks them without loading it. */

/** The most endpoints one offer carries: 100 EndpointSlices of kube's default 100 endpoints each. */
export const maxOfferedEndpoints = 10_000;
/** The most ports of one Service an offer carries. */
export const maxOfferedPorts = 100;
