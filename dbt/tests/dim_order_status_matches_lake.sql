-- depends_on: {{ ref('dim_order_status') }}
-- The dimension as its readers see it against the lake: orders per status
-- and their amounts. Fails (returns the statuses that differ) when the
-- location holds another mart's rows too.
with lake as (
    select status, count(*) as orders, coalesce(sum(amount), 0) as amount
    from {{ source('lake', 'orders') }}
    group by status
),

mart as (
    select status, count(*) as orders, coalesce(sum(amount), 0) as amount
    from {{ read_location('dim_order_status') }}
    group by status
)

select
    coalesce(lake.status, mart.status) as status,
    lake.orders as lake_orders, mart.orders as mart_orders,
    lake.amount as lake_amount, mart.amount as mart_amount
from lake
full outer join mart on lake.status is not distinct from mart.status
where lake.orders is distinct from mart.orders or lake.amount is distinct from mart.amount
