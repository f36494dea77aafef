-- Origins (scheme://host[:port]) an operator adds to a client besides those of its redirect
-- URIs, for the CORS allow-list of the endpoints single-page apps call from the browser. A
-- JSON array of origins, serialized as browsers send them in `Origin`.
ALTER TABLE clients ADD COLUMN web_origins TEXT NOT NULL DEFAULT '[]';
