"""Judge0's API (CE 1.13): the routes (`routes`), the request and answer models, the rendering of a
submission, and the read-only information routes (`info`)."""
