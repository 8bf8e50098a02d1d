// Renders the service's OpenAPI document with Swagger UI (loaded by index.html from the project's
// own swagger-ui-dist). A separate file, not an inline script, so the page's CSP can forbid those.
window.ui = window.SwaggerUIBundle({
  url: "openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  // "Try it out" calls the REST paths on this same origin.
  tryItOutEnabled: true,
  presets: [window.SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
  // No validator badge: it would send the document to validator.swagger.io.
  validatorUrl: null,
});
