//! MCP servers: `pb::McpServer` to and from `McpServerSpec`, with its per-tool overlays, and a server's status.

use crate::backend::mcp::{McpServerSpec, McpStatus, ToolOverlay};
use crate::pb::v1 as pb;
use crate::registry::{Budget, PolicyRule, Review};

impl TryFrom<pb::McpServer> for McpServerSpec {
    type Error = String;

    fn try_from(server: pb::McpServer) -> Result<Self, String> {
        let overlays = server
            .overlays
            .into_iter()
            .map(|(name, o)| ToolOverlay::try_from(o).map(|o| (name, o)))
            .collect::<Result<_, String>>()?;
        let mut spec = McpServerSpec {
            name: server.name,
            prefix: server.prefix,
            separator: server.separator,
            tenant: server.tenant,
            refresh_interval_ms: server.refresh_interval_ms,
            pass_invalid_output: server.pass_invalid_output,
            overlays,
            ..McpServerSpec::default()
        };
        match server.transport {
            Some(pb::mcp_server::Transport::Stdio(stdio)) => {
                spec.command = Some(stdio.command);
                spec.args = stdio.args;
                spec.env = stdio.env.into_iter().collect();
                spec.cwd = (!stdio.cwd.is_empty()).then_some(stdio.cwd);
            }
            Some(pb::mcp_server::Transport::Http(http)) => {
                spec.url = Some(http.url);
                spec.headers = http.headers.into_iter().collect();
            }
            None => {}
        }
        Ok(spec)
    }
}

impl From<McpServerSpec> for pb::McpServer {
    fn from(spec: McpServerSpec) -> Self {
        let transport = match (spec.command, spec.url) {
            (Some(command), _) => Some(pb::mcp_server::Transport::Stdio(pb::McpStdio {
                command,
                args: spec.args,
                env: spec.env.into_iter().collect(),
                cwd: spec.cwd.unwrap_or_default(),
            })),
            (None, Some(url)) => {
                Some(pb::mcp_server::Transport::Http(pb::McpHttp { url, headers: spec.headers.into_iter().collect() }))
            }
            (None, None) => None,
        };
        pb::McpServer {
            name: spec.name,
            transport,
            prefix: spec.prefix,
            separator: spec.separator,
            tenant: spec.tenant,
            refresh_interval_ms: spec.refresh_interval_ms,
            overlays: spec.overlays.into_iter().map(|(name, o)| (name, o.into())).collect(),
            pass_invalid_output: spec.pass_invalid_output,
        }
    }
}

impl TryFrom<pb::ToolOverlay> for ToolOverlay {
    type Error = String;

    fn try_from(o: pb::ToolOverlay) -> Result<Self, String> {
        Ok(ToolOverlay {
            inject: o.inject.into_iter().map(Into::into).collect(),
            repair: o.repair.unwrap_or_default().into(),
            limits: o.limits.unwrap_or_default().into(),
            review: o.review.map(Review::from).unwrap_or_default(),
            budget: o.budget.map(Budget::from).unwrap_or_default(),
            labels: o.labels.into_iter().collect(),
            policy: o.policy.into_iter().map(PolicyRule::try_from).collect::<Result<_, _>>()?,
        })
    }
}

impl From<ToolOverlay> for pb::ToolOverlay {
    fn from(o: ToolOverlay) -> Self {
        pb::ToolOverlay {
            inject: o.inject.iter().map(Into::into).collect(),
            repair: Some((&o.repair).into()),
            limits: Some((&o.limits).into()),
            review: Some((&o.review).into()),
            budget: Some(o.budget.into()),
            labels: o.labels.into_iter().collect(),
            policy: o.policy.iter().map(pb::PolicyRule::from).collect(),
        }
    }
}

impl From<McpStatus> for pb::McpServerStatus {
    fn from(status: McpStatus) -> Self {
        pb::McpServerStatus {
            server: Some(status.spec.into()),
            connected: status.connected,
            tools: status.tools,
            problems: status.problems,
            last_error: status.last_error,
            connects: status.connects,
            output_violations: status.output_violations,
        }
    }
}
