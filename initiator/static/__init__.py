"""The dashboard's page, script and style sheet (package data, served at / and /static)."""
