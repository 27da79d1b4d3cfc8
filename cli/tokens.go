package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
)

func (a *app) tokensCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "tokens",
		Short: "Create, list and revoke the server's API tokens",
		Long: "Each token belongs to one tenant and has one role: admin (everything in its tenant),\n" +
			"client (enqueue, read, cancel), worker (claim and report) or reader (read jobs, runs,\n" +
			"queues and dead letters; change nothing). Only a hash of the secret is stored: the\n" +
			"secret is printed once, when the token is created.",
	}, a.tokensCreateCmd(), a.tokensLsCmd(), a.tokensRevokeCmd())
}

// withTokens runs fn on the token keeper of the store the flags name.
func (a *app) withTokens(ctx context.Context, mode openMode, fn func(store.Tokens) error) error {
	return a.withStore(ctx, mode, func(st store.Store) error {
		keeper, err := store.TokensOf(st)
		if err != nil {
			return err
		}
		return fn(keeper)
	})
}

func (a *app) tokensCreateCmd() *cobra.Command {
	var tenantName, role, name string
	cmd := &cobra.Command{
		Use:   "create --tenant T --role R",
		Short: "Create a token and print its secret (once) on stdout",
		Example: `  TOKEN=$(stint tokens create --tenant acme --role worker --name ci-runners)
  curl -H "Authorization: Bearer $TOKEN" ...`,
		Args: cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			if !store.Role(role).Valid() {
				return usageErrorf("--role %q: expected %s", role, store.Roles)
			}
			if err := store.ValidTenant(tenantName); err != nil {
				return usageErrorf("--tenant: %v", err)
			}
			tok, secret, err := server.NewToken(tenantName, store.Role(role), name)
			if err != nil {
				return err
			}
			return a.withTokens(cmd.Context(), mayCreate, func(keeper store.Tokens) error {
				if tok, err = keeper.TokenCreate(cmd.Context(), tok); err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "created token %s: tenant %s, role %s; its secret is below, shown only this once\n", tok.ID, tok.Tenant, tok.Role)
				fmt.Fprintln(cmd.OutOrStdout(), secret)
				return nil
			})
		}),
	}
	f := cmd.Flags()
	f.StringVar(&tenantName, "tenant", server.DefaultTenant, "tenant the token acts for; \"default\" is the tenant of local jobs")
	f.StringVar(&role, "role", "", "admin, client, worker or reader (required)")
	f.StringVar(&name, "name", "", "a name for the token, shown as the owner of the jobs its workers claim")
	return cmd
}

func (a *app) tokensLsCmd() *cobra.Command {
	var tenantName string
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List tokens (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			return a.withTokens(cmd.Context(), mustExist, func(keeper store.Tokens) error {
				toks, err := keeper.TokenList(cmd.Context(), tenantName)
				if err != nil {
					return err
				}
				t := newTable(cmd.OutOrStdout(), "ID", "TENANT", "ROLE", "NAME", "CREATED", "REVOKED")
				for _, tok := range toks {
					revoked := "-"
					if tok.RevokedAt != nil {
						revoked = tok.RevokedAt.Format(time.RFC3339)
					}
					t.row(tok.ID, tok.Tenant, string(tok.Role), tok.Name, tok.CreatedAt.Format(time.RFC3339), revoked)
				}
				return t.flush()
			})
		}),
	}
	cmd.Flags().StringVar(&tenantName, "tenant", "", "only this tenant's tokens")
	return cmd
}

func (a *app) tokensRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token: the server refuses it from the next request on",
		Args:  cobra.ExactArgs(1),
		RunE: run(func(cmd *cobra.Command, args []string) error {
			return a.withTokens(cmd.Context(), mustExist, func(keeper store.Tokens) error {
				tok, err := keeper.TokenRevoke(cmd.Context(), "", args[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "revoked token %s (tenant %s, role %s)\n", tok.ID, tok.Tenant, tok.Role)
				return nil
			})
		}),
	}
}
