"""AWS through boto3: prices, data checks, the S3 run store, CloudWatch and SageMaker imports.

Nothing here is imported by ``import advisor`` or by the collectors until an option or a command
asks for it, and boto3 itself is imported inside the functions that call AWS. Credentials come
only from boto3's own chain (environment, shared files, instance or task role); the advisor never
reads, stores or logs them. Every network call has connect and read timeouts and few retries.
"""
