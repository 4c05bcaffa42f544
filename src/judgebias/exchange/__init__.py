"""Requests answered elsewhere (issue 44): `judgebias requests export` writes the requests
a run still needs (export), `judgebias answers import` journals the answers (ingest), in
the formats of :mod:`judgebias.exchange.formats`."""
