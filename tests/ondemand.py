"""The Open OnDemand app (``mpiworkbench/deploy/ondemand``) rendered as OOD's dashboard renders it,
with Ruby's ERB: for ``tests/unit/test_ondemand.py`` (the scripts against stand-ins of OOD's
helpers) and ``tests/cluster/test_ondemand_job.py`` (the rendered job under Slurm)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from mpiworkbench.deploy import ondemand_app_dir

#: Renders the app as OOD's dashboard does: argv[0] is a JSON file {app, out, form, session, connection}.
RENDER_RB = r"""
require "erb"
require "json"
require "ostruct"
require "pathname"

spec = JSON.parse(File.read(ARGV[0]))
app = Pathname.new(spec["app"])
out = Pathname.new(spec["out"])

def render(path, context_binding)
  erb = ERB.new(path.read, trim_mode: "-")
  erb.filename = path.to_s
  erb.result(context_binding)
end

# submit.yml.erb: the form's values as bare names (OOD: an OpenStruct's own binding)
form = OpenStruct.new(spec["form"].merge("staged_root" => out.to_s))
out.join("submit.yml").write(render(app.join("submit.yml.erb"), form.instance_eval { binding }))

# template/*.erb: `session` and `context` (OOD: BatchConnect::Session::TemplateBinding)
TemplateBinding = Struct.new(:session, :context) do
  def get_binding
    binding
  end
end
templates = TemplateBinding.new(OpenStruct.new(spec["session"]), OpenStruct.new(spec["form"])).get_binding
out.join("template").mkpath
Pathname.glob(app.join("template", "*.erb")).each do |path|
  target = out.join("template", path.basename.sub_ext(""))
  target.write(render(path, templates))
  target.chmod(path.stat.mode)  # OOD renames the .erb to the rendered name: its mode stays
end

# view.html.erb: connection.yml's values as bare names (OOD: the connection OpenStruct's binding)
connection = OpenStruct.new(spec["connection"])
out.join("view.html").write(render(app.join("view.html.erb"), connection.instance_eval { binding }))
"""



def render_app(work: Path, form: dict[str, str], connection: dict, session_id: str = "sample-session") -> Path:
    """The app rendered with the *form*'s values (Strings, as OOD's form gives them) into
    ``work/session`` (OOD's staged session directory), ``view.html`` with *connection*; its path."""
    out = work / "session"
    out.mkdir()
    spec = work / "render.json"
    spec.write_text(json.dumps({"app": str(ondemand_app_dir()), "out": str(out), "form": form,
                                "session": {"id": session_id, "staged_root": str(out), "cluster_id": form.get("cluster", "")},
                                "connection": connection}))
    script = work / "render.rb"
    script.write_text(RENDER_RB)
    subprocess.run([shutil.which("ruby") or "ruby", str(script), str(spec)], check=True, timeout=60,
                   capture_output=True, text=True)
    return out
