-- Who created a knowledge base, when that was a member who was not a tenant admin (their user id); empty
-- when a tenant admin, the local single user, the CLI or an operator channel created it, and for
-- knowledge bases created before 0009. Operator ingestion refuses a knowledge base a member created for
-- as long as that member is not a tenant admin: demoting or revoking the member does not undo what they
-- could grant and read while they owned it (ingest.OperatorKB).
ALTER TABLE knowledge_bases ADD COLUMN created_by VARCHAR(64) NOT NULL DEFAULT '';
