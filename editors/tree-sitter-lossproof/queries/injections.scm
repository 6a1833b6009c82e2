; The body of a ``` fence in an assertion is SQL (DataFusion dialect).
((sql) @injection.content
  (#set! injection.language "sql"))
