{# No row twice for the columns given (dbt_utils' unique_combination_of_columns, without the package download). #}
{% test unique_combination(model, columns) %}
select {{ columns | join(', ') }}, count(*) as copies
from {{ model }}
group by {{ columns | join(', ') }}
having count(*) > 1
{% endtest %}
