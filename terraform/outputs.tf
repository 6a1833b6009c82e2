output "tasks_queue_url" {
  value = aws_sqs_queue.tasks.url
}

output "alerts_queue_url" {
  value = aws_sqs_queue.alerts.url
}

output "state_machine_arn" {
  value = aws_sfn_state_machine.nightly.arn
}

output "lake_bucket" {
  value = aws_s3_bucket.lake.id
}

output "marts_bucket" {
  value = aws_s3_bucket.marts.id
}

output "glue_database" {
  value = aws_glue_catalog_database.lake.name
}

output "worker_role_arn" {
  value = aws_iam_role.worker.arn
}
