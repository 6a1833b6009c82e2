export LOSSPROOF_SOURCE_HOST=127.0.0.1 LOSSPROOF_SOURCE_PORT=55432 LOSSPROOF_SOURCE_USER=postgres LOSSPROOF_SOURCE_PASSWORD=x LOSSPROOF_SOURCE_DATABASE=shop
export LOSSPROOF_SLOT=lp_slot LOSSPROOF_PUBLICATION=lp_pub LOSSPROOF_TABLES=public.orders,public.order_items LOSSPROOF_RUN=r1
export LOSSPROOF_CATALOG_NAME=lake LOSSPROOF_CATALOG_PROPERTIES='{"type":"sql","uri":"sqlite:////tmp/pdz/lake/catalog.db","warehouse":"file:///tmp/pdz/lake/warehouse"}'
export LOSSPROOF_NAMESPACE=cdc LOSSPROOF_STATE_DIR=/tmp/pdz/state
