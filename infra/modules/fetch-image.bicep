// The image an existing app runs, so that `azd provision` keeps it (the "exists"
// pattern: azd passes SERVICE_<NAME>_RESOURCE_EXISTS). Empty for a new app.
param exists bool
param name string

resource existingApp 'Microsoft.App/containerApps@2025-07-01' existing = if (exists) {
  name: name
}

output containers array = exists ? existingApp.properties.template.containers : []
