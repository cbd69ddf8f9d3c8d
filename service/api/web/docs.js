// The interactive API reference at /docs: Swagger UI (shipped by the swagger-ui-bundle-v2
// package, served from /docs/) over this server's /openapi.yaml. A file of its own, not an
// inline script, so the page runs under the same Content-Security-Policy as /play.
"use strict";

window.addEventListener("load", () => {
  window.ui = SwaggerUIBundle({
    url: "/openapi.yaml",
    dom_id: "#swagger-ui",
    deepLinking: true,
    displayOperationId: true,
    docExpansion: "list",
    validatorUrl: null, // (else the spec is sent to another host for a badge)
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
  });
});
