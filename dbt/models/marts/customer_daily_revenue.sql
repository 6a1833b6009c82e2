{#
  Revenue per customer and day (UTC) of the orders that exist in the lake.

  Incremental, and exact under deletes: a watermark ("orders newer than the
  last build") would never see a deleted or cascaded order, nor the day an
  updated order left, so yesterday's revenue would stay too high. Instead
  each build recomputes the groups from the lake (cheap: one aggregate) and
  writes only the groups whose figures differ from the mart's (new or
  changed); the post-hook forgets groups with no order left. `built_by` is
  the dbt invocation that last wrote a row: a build that changed nothing
  rewrites no row.
#}
{{ config(
    unique_key=['customer_id', 'order_date'],
    post_hook=[
        "delete from {{ this }} m where not exists (
            select 1 from {{ source('lake', 'orders') }} o
            where o.customer_id = m.customer_id
              and cast(o.created_at as date) = m.order_date)",
    ] + publish('customer_daily_revenue'),
) }}

with groups as (
    select
        customer_id,
        cast(created_at as date) as order_date,
        count(*) as orders,
        sum(amount) as revenue
    from {{ source('lake', 'orders') }}
    group by 1, 2
)

select
    groups.*,
    '{{ invocation_id }}' as built_by
from groups
{% if is_incremental() %}
where not exists (
    select 1 from {{ this }} m
    where m.customer_id = groups.customer_id
      and m.order_date = groups.order_date
      and m.orders = groups.orders
      and m.revenue = groups.revenue
)
{% endif %}
