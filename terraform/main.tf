# The nightly's AWS side, the same resources `lossproof nightly` creates on
# moto (the names test in tests/nightly.rs checks that they match):
#
#   S3          <prefix>-lake (Iceberg warehouse), <prefix>-marts (one prefix
#               per mart), <prefix>-access-logs (their access logs)
#   Glue        database <prefix>_lake (the Iceberg catalog)
#   SQS         <prefix>-nightly-tasks (the workflow's callback tasks),
#               <prefix>-nightly-alerts (what Alert sends)
#   Step Fns    <prefix>-nightly, from nightly.asl.json (the file the runtime
#               embeds), logging to CloudWatch, traced
#   IAM         the state machine's role; the worker's role
#   KMS         one key for the buckets, queues and logs

locals {
  account    = data.aws_caller_identity.current.account_id
  partition  = data.aws_partition.current.partition
  worker_arn = coalesce(var.worker_principal_arn, "arn:${local.partition}:iam::${local.account}:root")
}

# ---------------------------------------------------------------- KMS

resource "aws_kms_key" "lake" {
  description             = "${var.name_prefix}: lake, marts, queues and logs"
  deletion_window_in_days = var.kms_key_deletion_window_days
  enable_key_rotation     = true
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "AccountAdministers"
        Effect    = "Allow"
        Principal = { AWS = "arn:${local.partition}:iam::${local.account}:root" }
        Action    = "kms:*"
        Resource  = "*"
      },
      {
        Sid       = "CloudWatchLogsEncrypt"
        Effect    = "Allow"
        Principal = { Service = "logs.${var.region}.amazonaws.com" }
        Action    = ["kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:DescribeKey"]
        Resource  = "*"
      },
    ]
  })
}

# ---------------------------------------------------------------- S3

resource "aws_s3_bucket" "access_logs" {
  # checkov:skip=CKV_AWS_144:Cross-region replication is a deployment choice, not this stack's.
  # checkov:skip=CKV2_AWS_62:Nothing consumes events of the access logs.
  bucket = "${var.name_prefix}-access-logs"
}

resource "aws_s3_bucket" "lake" {
  # checkov:skip=CKV_AWS_144:Cross-region replication is a deployment choice, not this stack's.
  # checkov:skip=CKV2_AWS_62:The nightly runs on a schedule; nothing reacts to object events.
  bucket = "${var.name_prefix}-lake"
}

resource "aws_s3_bucket" "marts" {
  # checkov:skip=CKV_AWS_144:Cross-region replication is a deployment choice, not this stack's.
  # checkov:skip=CKV2_AWS_62:Marts are read on demand; nothing reacts to object events.
  bucket = "${var.name_prefix}-marts"
}

locals {
  buckets = {
    access_logs = aws_s3_bucket.access_logs.id
    lake        = aws_s3_bucket.lake.id
    marts       = aws_s3_bucket.marts.id
  }
}

resource "aws_s3_bucket_public_access_block" "all" {
  for_each                = local.buckets
  bucket                  = each.value
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_versioning" "all" {
  for_each = local.buckets
  bucket   = each.value
  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "all" {
  for_each = local.buckets
  bucket   = each.value
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = "aws:kms"
      kms_master_key_id = aws_kms_key.lake.arn
    }
    bucket_key_enabled = true
  }
}

# Iceberg expires its own snapshots and deletes orphan files; versioning
# keeps what it deletes for 30 days, then S3 forgets it.
resource "aws_s3_bucket_lifecycle_configuration" "all" {
  for_each = local.buckets
  bucket   = each.value
  rule {
    id     = "noncurrent-and-incomplete"
    status = "Enabled"
    filter {}
    noncurrent_version_expiration {
      noncurrent_days = 30
    }
    abort_incomplete_multipart_upload {
      days_after_initiation = 7
    }
  }
}

resource "aws_s3_bucket_logging" "lake" {
  bucket        = aws_s3_bucket.lake.id
  target_bucket = aws_s3_bucket.access_logs.id
  target_prefix = "lake/"
}

resource "aws_s3_bucket_logging" "marts" {
  bucket        = aws_s3_bucket.marts.id
  target_bucket = aws_s3_bucket.access_logs.id
  target_prefix = "marts/"
}

# ---------------------------------------------------------------- Glue

resource "aws_glue_catalog_database" "lake" {
  name         = "${var.name_prefix}_lake"
  description  = "${var.name_prefix}: the consumers' Iceberg tables"
  location_uri = "s3://${aws_s3_bucket.lake.id}/"
}

# ---------------------------------------------------------------- SQS

resource "aws_sqs_queue" "tasks" {
  name                       = "${var.name_prefix}-nightly-tasks"
  kms_master_key_id          = aws_kms_key.lake.id
  visibility_timeout_seconds = 60
  message_retention_seconds  = 86400
}

resource "aws_sqs_queue" "alerts" {
  name                      = "${var.name_prefix}-nightly-alerts"
  kms_master_key_id         = aws_kms_key.lake.id
  message_retention_seconds = 1209600
}

# ---------------------------------------------------------------- Step Functions

resource "aws_cloudwatch_log_group" "nightly" {
  name              = "/aws/vendedlogs/states/${var.name_prefix}-nightly"
  retention_in_days = 365
  kms_key_id        = aws_kms_key.lake.arn
}

resource "aws_sfn_state_machine" "nightly" {
  name     = "${var.name_prefix}-nightly"
  role_arn = aws_iam_role.states.arn
  definition = templatefile("${path.module}/nightly.asl.json", {
    tasks_queue_url  = aws_sqs_queue.tasks.url
    alerts_queue_url = aws_sqs_queue.alerts.url
  })

  logging_configuration {
    log_destination        = "${aws_cloudwatch_log_group.nightly.arn}:*"
    include_execution_data = true
    level                  = "ERROR"
  }

  tracing_configuration {
    enabled = true
  }
}
