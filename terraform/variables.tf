variable "name_prefix" {
  description = "Prefix of every resource name. `lossproof nightly` uses the default, `lossproof`."
  type        = string
  default     = "lossproof"
  validation {
    # Bucket names allow no underscores, Glue names (for Athena) no hyphens:
    # the prefix is safe in both.
    condition     = can(regex("^[a-z][a-z0-9]{1,30}$", var.name_prefix))
    error_message = "name_prefix: 2-31 lowercase letters and digits, starting with a letter."
  }
}

variable "region" {
  description = "AWS region."
  type        = string
  default     = "us-east-1"
}

variable "endpoint" {
  description = "An AWS emulator's URL (moto server: http://127.0.0.1:PORT); null for real AWS."
  type        = string
  default     = null
}

variable "worker_principal_arn" {
  description = "The IAM principal the nightly worker (`lossproof nightly`) runs as; it may assume the worker role. Null: the account root."
  type        = string
  default     = null
}

variable "kms_key_deletion_window_days" {
  description = "Waiting period before the lake's KMS key is deleted."
  type        = number
  default     = 30
}
