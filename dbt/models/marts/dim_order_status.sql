{#
  Every order in the lake with its current status: the order-status
  dimension. Incremental on the row itself (orders whose status, amount or
  update time differ from the mart's are rewritten); the post-hook forgets
  orders that were deleted (or cascaded away with their customer).
#}
{{ config(
    unique_key='order_id',
    post_hook=[
        "delete from {{ this }} m where not exists (
            select 1 from {{ source('lake', 'orders') }} o where o.order_id = m.order_id)",
    ] + publish('dim_order_status'),
) }}

select
    o.order_id,
    o.customer_id,
    o.status,
    o.amount,
    o.created_at,
    o.updated_at,
    '{{ invocation_id }}' as built_by
from {{ source('lake', 'orders') }} o
{% if is_incremental() %}
where not exists (
    select 1 from {{ this }} m
    where m.order_id = o.order_id
      and m.status is not distinct from o.status
      and m.amount is not distinct from o.amount
      and m.updated_at is not distinct from o.updated_at
)
{% endif %}
