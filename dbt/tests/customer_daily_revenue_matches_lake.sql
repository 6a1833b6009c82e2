-- depends_on: {{ ref('customer_daily_revenue') }}
-- The mart as its readers see it (every Parquet file at its location)
-- against the lake it came from: groups, orders and revenue. Fails (returns
-- a row) when the location holds another mart's rows too.
with lake as (
    select
        count(distinct (customer_id, cast(created_at as date))) as groups,
        count(*) as orders,
        coalesce(sum(amount), 0) as revenue
    from {{ source('lake', 'orders') }}
),

mart as (
    select
        count(*) as groups,
        coalesce(sum(orders), 0) as orders,
        coalesce(sum(revenue), 0) as revenue
    from {{ read_location('customer_daily_revenue') }}
)

select lake.*, mart.groups as mart_groups, mart.orders as mart_orders, mart.revenue as mart_revenue
from lake, mart
where lake.groups <> mart.groups or lake.orders <> mart.orders or lake.revenue <> mart.revenue
