{#
  Each mart is published as Parquet in a folder of its own (its location),
  the way the marts of the pipeline lossproof reproduces were tables at
  object-store prefixes. A reader of a location reads every Parquet file in
  it, so two marts sharing one location read each other's rows: the tests
  in tests/ read the locations, not the DuckDB tables, to catch exactly that.
#}

{% macro mart_location(mart) -%}
  {{- var('locations', {}).get(mart, env_var('LOSSPROOF_MARTS_DIR') ~ '/' ~ mart) -}}
{%- endmacro %}

{# Every Parquet file at a mart's location, as a reader sees it. #}
{% macro read_location(mart) -%}
  read_parquet('{{ mart_location(mart) }}/*.parquet', union_by_name = true)
{%- endmacro %}

{#
  Post-hooks: (re)write this mart's own file at its location. COPY with
  per_thread_output creates the folder; overwrite_or_ignore replaces this
  mart's file and leaves any other file in the folder alone; one thread
  makes it exactly one file (<mart>_0.parquet), so a rewrite never leaves
  a stale second file behind.
#}
{% macro publish(mart) -%}
  {%- set copy -%}
  copy (select * from {{ this }}) to '{{ mart_location(mart) }}'
    (format parquet, per_thread_output true, filename_pattern '{{ mart }}_{i}', overwrite_or_ignore true)
  {%- endset -%}
  {{ return(["set threads = 1", copy, "reset threads"]) }}
{%- endmacro %}
