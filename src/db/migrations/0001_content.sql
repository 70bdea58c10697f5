-- btree_gin lets the search index lead with workspace_id (see content_search_chunks_vector_idx).
CREATE EXTENSION IF NOT EXISTS btree_gin;--> statement-breakpoint
CREATE TABLE "content_article_collections" (
	"workspace_id" uuid NOT NULL,
	"article_id" uuid NOT NULL,
	"collection_id" uuid NOT NULL,
	"position" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "content_article_collections_workspace_id_article_id_collection_id_pk" PRIMARY KEY("workspace_id","article_id","collection_id")
);
--> statement-breakpoint
CREATE TABLE "content_articles" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"title" text NOT NULL,
	"slug" text NOT NULL,
	"body" text,
	"description" text,
	"visibility" text DEFAULT 'public' NOT NULL,
	"status" text DEFAULT 'draft' NOT NULL,
	"published_at" timestamp with time zone,
	"created_by_user_id" uuid,
	"index_status" text DEFAULT 'pending' NOT NULL,
	"indexed_at" timestamp with time zone,
	"index_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "content_collections" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"name" text NOT NULL,
	"slug" text NOT NULL,
	"description" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "content_settings" (
	"workspace_id" uuid PRIMARY KEY NOT NULL,
	"search_language" text DEFAULT 'english' NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "content_search_chunks" (
	"workspace_id" uuid NOT NULL,
	"document_type" text NOT NULL,
	"document_id" uuid NOT NULL,
	"position" integer NOT NULL,
	"title" text NOT NULL,
	"heading" text,
	"content" text NOT NULL,
	"visibility" text NOT NULL,
	"url" text,
	"language" "regconfig" NOT NULL,
	"search_vector" "tsvector" GENERATED ALWAYS AS (setweight(to_tsvector(language, title), 'A') || setweight(to_tsvector(language, regexp_replace(coalesce(heading, ''), '^.*› ', '')), 'B') || setweight(to_tsvector(language, content), 'C')) STORED NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "content_search_chunks_workspace_id_document_type_document_id_position_pk" PRIMARY KEY("workspace_id","document_type","document_id","position")
);
--> statement-breakpoint
CREATE TABLE "content_source_items" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"source_id" uuid NOT NULL,
	"external_key" text NOT NULL,
	"title" text NOT NULL,
	"url" text,
	"file_name" text,
	"content" text NOT NULL,
	"content_hash" text NOT NULL,
	"deleted_at" timestamp with time zone,
	"index_status" text DEFAULT 'pending' NOT NULL,
	"indexed_at" timestamp with time zone,
	"index_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "content_sources" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"type" text NOT NULL,
	"name" text NOT NULL,
	"config" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"visibility" text DEFAULT 'public' NOT NULL,
	"sync_status" text DEFAULT 'idle' NOT NULL,
	"last_synced_at" timestamp with time zone,
	"last_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "content_article_collections" ADD CONSTRAINT "content_article_collections_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "content_article_collections" ADD CONSTRAINT "content_article_collections_article_id_content_articles_id_fk" FOREIGN KEY ("article_id") REFERENCES "public"."content_articles"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "content_article_collections" ADD CONSTRAINT "content_article_collections_collection_id_content_collections_id_fk" FOREIGN KEY ("collection_id") REFERENCES "public"."content_collections"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "content_articles" ADD CONSTRAINT "content_articles_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "content_articles" ADD CONSTRAINT "content_articles_created_by_user_id_users_id_fk" FOREIGN KEY ("created_by_user_id") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "content_collections" ADD CONSTRAINT "content_collections_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "content_settings" ADD CONSTRAINT "content_settings_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "content_search_chunks" ADD CONSTRAINT "content_search_chunks_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "content_source_items" ADD CONSTRAINT "content_source_items_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "content_source_items" ADD CONSTRAINT "content_source_items_source_id_content_sources_id_fk" FOREIGN KEY ("source_id") REFERENCES "public"."content_sources"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "content_sources" ADD CONSTRAINT "content_sources_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "content_article_collections_collection_idx" ON "content_article_collections" USING btree ("workspace_id","collection_id");--> statement-breakpoint
CREATE UNIQUE INDEX "content_articles_workspace_slug_idx" ON "content_articles" USING btree ("workspace_id","slug");--> statement-breakpoint
CREATE INDEX "content_articles_workspace_created_idx" ON "content_articles" USING btree ("workspace_id","created_at","id");--> statement-breakpoint
CREATE INDEX "content_articles_workspace_status_idx" ON "content_articles" USING btree ("workspace_id","status","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "content_collections_workspace_slug_idx" ON "content_collections" USING btree ("workspace_id","slug");--> statement-breakpoint
CREATE INDEX "content_search_chunks_vector_idx" ON "content_search_chunks" USING gin ("workspace_id","search_vector") WITH (fastupdate=false);--> statement-breakpoint
CREATE UNIQUE INDEX "content_source_items_source_key_idx" ON "content_source_items" USING btree ("workspace_id","source_id","external_key");--> statement-breakpoint
CREATE INDEX "content_source_items_source_created_idx" ON "content_source_items" USING btree ("workspace_id","source_id","created_at","id");--> statement-breakpoint
CREATE INDEX "content_sources_workspace_created_idx" ON "content_sources" USING btree ("workspace_id","created_at","id");--> statement-breakpoint
-- Keep the search vector inline in the heap row (compressed if need be) instead of in the TOAST table: matching
-- reads it for every candidate chunk, and an out-of-line fetch per row tripled the cost of frequent terms.
ALTER TABLE "content_search_chunks" ALTER COLUMN "search_vector" SET STORAGE MAIN;
