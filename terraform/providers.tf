# Real AWS by default. With `endpoint` set (an emulator such as moto server),
# every service this stack uses goes there, S3 with path-style addressing,
# and the checks that need real AWS are skipped.
provider "aws" {
  region = var.region

  s3_use_path_style           = var.endpoint != null
  skip_credentials_validation = var.endpoint != null
  skip_metadata_api_check     = var.endpoint != null
  skip_requesting_account_id  = var.endpoint != null

  dynamic "endpoints" {
    for_each = var.endpoint == null ? [] : [var.endpoint]
    content {
      glue   = endpoints.value
      iam    = endpoints.value
      kms    = endpoints.value
      logs   = endpoints.value
      s3     = endpoints.value
      sfn    = endpoints.value
      sqs    = endpoints.value
      sts    = endpoints.value
    }
  }
}

data "aws_caller_identity" "current" {}
data "aws_partition" "current" {}
