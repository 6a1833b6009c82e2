# Least privilege: the state machine may only send to its two queues (and
# log and trace, which AWS grants only on "*"); the worker may only take its
# tasks, answer them, start and watch this one state machine, and read and
# write the lake and the marts.

data "aws_iam_policy_document" "states_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["states.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account]
    }
  }
}

resource "aws_iam_role" "states" {
  name               = "${var.name_prefix}-nightly-states"
  assume_role_policy = data.aws_iam_policy_document.states_assume.json
}

data "aws_iam_policy_document" "states" {
  statement {
    sid       = "SendTasksAndAlerts"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.tasks.arn, aws_sqs_queue.alerts.arn]
  }
  statement {
    sid       = "EncryptMessages"
    actions   = ["kms:GenerateDataKey", "kms:Decrypt"]
    resources = [aws_kms_key.lake.arn]
  }
  statement {
    # CloudWatch Logs delivery and X-Ray accept no narrower resource
    # (Step Functions' documented policy for logging and tracing).
    sid = "LogAndTrace"
    actions = [
      "logs:CreateLogDelivery", "logs:GetLogDelivery", "logs:UpdateLogDelivery",
      "logs:DeleteLogDelivery", "logs:ListLogDeliveries", "logs:PutResourcePolicy",
      "logs:DescribeResourcePolicies", "logs:DescribeLogGroups",
      "xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules",
      "xray:GetSamplingTargets",
    ]
    resources = ["*"]
  }
}

resource "aws_iam_role_policy" "states" {
  name   = "send-tasks-and-alerts"
  role   = aws_iam_role.states.id
  policy = data.aws_iam_policy_document.states.json
}

data "aws_iam_policy_document" "worker_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "AWS"
      identifiers = [local.worker_arn]
    }
  }
}

resource "aws_iam_role" "worker" {
  name               = "${var.name_prefix}-nightly-worker"
  assume_role_policy = data.aws_iam_policy_document.worker_assume.json
}

data "aws_iam_policy_document" "worker" {
  statement {
    sid       = "TakeTasksReadAlerts"
    actions   = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:GetQueueAttributes"]
    resources = [aws_sqs_queue.tasks.arn, aws_sqs_queue.alerts.arn]
  }
  statement {
    sid = "RunTheNightly"
    actions = [
      "states:StartExecution", "states:DescribeStateMachine", "states:ListStateMachines",
    ]
    resources = [aws_sfn_state_machine.nightly.arn]
  }
  statement {
    sid = "WatchAndAnswerItsExecutions"
    actions = [
      "states:DescribeExecution", "states:StopExecution", "states:GetExecutionHistory",
      "states:SendTaskSuccess", "states:SendTaskFailure", "states:SendTaskHeartbeat",
    ]
    resources = [
      aws_sfn_state_machine.nightly.arn,
      "arn:${local.partition}:states:${var.region}:${local.account}:execution:${aws_sfn_state_machine.nightly.name}:*",
    ]
  }
  statement {
    sid       = "ListLakeAndMarts"
    actions   = ["s3:ListBucket", "s3:GetBucketLocation"]
    resources = [aws_s3_bucket.lake.arn, aws_s3_bucket.marts.arn]
  }
  statement {
    sid       = "ReadWriteLakeAndMarts"
    actions   = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"]
    resources = ["${aws_s3_bucket.lake.arn}/*", "${aws_s3_bucket.marts.arn}/*"]
  }
  statement {
    sid = "IcebergCatalog"
    actions = [
      "glue:GetDatabase", "glue:GetTable", "glue:GetTables", "glue:CreateTable",
      "glue:UpdateTable", "glue:DeleteTable",
    ]
    resources = [
      "arn:${local.partition}:glue:${var.region}:${local.account}:catalog",
      aws_glue_catalog_database.lake.arn,
      "arn:${local.partition}:glue:${var.region}:${local.account}:table/${aws_glue_catalog_database.lake.name}/*",
    ]
  }
  # Each lossproof run keeps each consumer's tables in a Glue database of its
  # own, `<consumer>_lp_<run>` (an Iceberg namespace), created and dropped
  # with the seed: only databases named so.
  statement {
    sid = "RunNamespaces"
    actions = [
      "glue:CreateDatabase", "glue:GetDatabase", "glue:DeleteDatabase",
      "glue:GetTable", "glue:GetTables", "glue:CreateTable", "glue:UpdateTable", "glue:DeleteTable",
    ]
    resources = [
      "arn:${local.partition}:glue:${var.region}:${local.account}:catalog",
      "arn:${local.partition}:glue:${var.region}:${local.account}:database/*_lp_*",
      "arn:${local.partition}:glue:${var.region}:${local.account}:table/*_lp_*/*",
    ]
  }
  statement {
    sid       = "UseTheKey"
    actions   = ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"]
    resources = [aws_kms_key.lake.arn]
  }
}

resource "aws_iam_role_policy" "worker" {
  name   = "nightly-worker"
  role   = aws_iam_role.worker.id
  policy = data.aws_iam_policy_document.worker.json
}
